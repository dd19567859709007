//! The frontend: a session runs statements (parse → bind → plan → meta or
//! batch engine) and returns results in pgwire-neutral form.
//!
//! It owns a client's session: its variables, transaction state, prepared
//! statements and the order of a statement's steps over the layers below.
//! It must not know the wire protocol (`pgwire` calls it through
//! [`Session`] and [`SessionFactory`]) nor the stream runtime, which it
//! reaches only through meta (`ci/layers`).

pub mod copy;
pub mod session;
#[cfg(test)]
mod tests;

use async_trait::async_trait;
use ebbflow_common::ErrorKind;

use ebbflow_common::{DataType, Field, Row};
use ebbflow_sql::ParamContext;

/// The outcome of one statement.
#[derive(Debug, Clone)]
pub enum StatementResult {
    /// Rows of a query (also `SHOW`, `EXPLAIN`, `DESCRIBE`, `DRY RUN`).
    Rows {
        fields: Vec<Field>,
        rows: Vec<Row>,
        /// Command tag, normally `SELECT n`.
        tag: String,
    },
    /// A command with its tag: `INSERT 0 3`, `CREATE TABLE`, `FLUSH`, ...
    Command { tag: String },
    /// An empty query string.
    Empty,
    /// `COPY … FROM STDIN`: the session waits for the client's data, which
    /// goes to [`Session::copy_in`] with this.
    CopyIn(CopyIn),
    /// `COPY … TO STDOUT`: the output, one line (with its newline) a
    /// message; a header line first when asked for.
    CopyOut {
        columns: usize,
        lines: Vec<String>,
        /// `COPY n` (n counts rows, not the header).
        tag: String,
    },
}

/// A `COPY … FROM STDIN` waiting for its data.
#[derive(Debug, Clone)]
pub struct CopyIn {
    /// How many columns each row has (for CopyInResponse).
    pub columns: usize,
    pub table: std::sync::Arc<ebbflow_meta::catalog::RelationDesc>,
    /// The table column each field of a row goes to, in order.
    pub targets: Vec<usize>,
    pub options: ebbflow_sql::CopyOptions,
}

/// An error for the client: its kind (pgwire turns it into the SQLSTATE),
/// message, optional detail and hint.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FrontendError {
    /// The statement does not parse or bind.
    #[error(transparent)]
    Sql(#[from] ebbflow_sql::SqlError),
    /// The planner cannot plan it.
    #[error(transparent)]
    Plan(#[from] ebbflow_planner::PlanError),
    /// Meta refused it, or its barrier failed.
    #[error(transparent)]
    Meta(#[from] ebbflow_meta::MetaError),
    /// A batch query failed while running.
    #[error(transparent)]
    Batch(#[from] ebbflow_batch::BatchError),
    /// An expression failed.
    #[error(transparent)]
    Expr(#[from] ebbflow_expr::ExprError),
    /// A value (a parameter, a COPY field) is not a value of its type.
    #[error(transparent)]
    Value(#[from] ebbflow_common::text::ParseError),
    /// The session's own refusals: settings, transactions, COPY framing,
    /// the protocol's.
    #[error("{message}")]
    Session {
        kind: ErrorKind,
        message: String,
        detail: Option<String>,
        hint: Option<String>,
    },
}

impl FrontendError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        FrontendError::Session {
            kind,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InternalError, message)
    }

    /// What went wrong, from which pgwire picks the SQLSTATE.
    pub fn kind(&self) -> ErrorKind {
        match self {
            FrontendError::Sql(e) => e.kind(),
            FrontendError::Plan(e) => e.kind(),
            FrontendError::Meta(e) => e.kind(),
            FrontendError::Batch(e) => e.kind(),
            FrontendError::Expr(e) => e.kind(),
            FrontendError::Value(e) => e.kind,
            FrontendError::Session { kind, .. } => *kind,
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            FrontendError::Sql(e) => e.detail(),
            FrontendError::Session { detail, .. } => detail.as_deref(),
            _ => None,
        }
    }

    pub fn hint(&self) -> Option<&str> {
        match self {
            FrontendError::Sql(e) => e.hint(),
            FrontendError::Meta(e) => e.hint(),
            FrontendError::Session { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// The same error with `detail` (PostgreSQL's DETAIL field).
    pub fn with_detail(self, detail: impl Into<String>) -> Self {
        let (kind, message, _, hint) = self.into_parts();
        FrontendError::Session {
            kind,
            message,
            detail: Some(detail.into()),
            hint,
        }
    }

    /// The same error with `hint` (PostgreSQL's HINT field).
    pub fn with_hint(self, hint: impl Into<String>) -> Self {
        let (kind, message, detail, _) = self.into_parts();
        FrontendError::Session {
            kind,
            message,
            detail,
            hint: Some(hint.into()),
        }
    }

    /// Kind, message, detail and hint, whatever the variant.
    fn into_parts(self) -> (ErrorKind, String, Option<String>, Option<String>) {
        match self {
            FrontendError::Session {
                kind,
                message,
                detail,
                hint,
            } => (kind, message, detail, hint),
            other => (
                other.kind(),
                other.to_string(),
                other.detail().map(str::to_owned),
                other.hint().map(str::to_owned),
            ),
        }
    }
}

pub type FrontendResult<T> = Result<T, FrontendError>;

/// What the pgwire layer needs from a client session. One per connection.
#[async_trait]
pub trait Session: Send + Sync {
    /// Run every statement of a simple-protocol query string, stopping at
    /// the first error (the results before it are returned with it).
    async fn run_simple(&self, sql: &str) -> (Vec<StatementResult>, Option<FrontendError>);

    /// Describe one statement of the extended protocol: the parameter types
    /// (declared ones kept, the others inferred) and the result columns
    /// (empty for commands).
    async fn describe(
        &self,
        sql: &str,
        param_types: &[Option<DataType>],
    ) -> Result<(Vec<DataType>, Vec<Field>), FrontendError>;

    /// Run one statement of the extended protocol with bound parameters.
    async fn run_extended(
        &self,
        sql: &str,
        params: ParamContext,
    ) -> Result<StatementResult, FrontendError>;

    /// Apply the data of a `COPY … FROM STDIN` that returned
    /// [`StatementResult::CopyIn`]: every row or none, as one statement.
    /// The session's `TimeZone`: `timestamptz` values are shown in it.
    fn time_zone(&self) -> ebbflow_common::Zone {
        ebbflow_common::Zone::UTC
    }

    /// The `TimeZone` setting as `SHOW` prints it (reported to the client
    /// in ParameterStatus when it changes).
    fn time_zone_setting(&self) -> String {
        "UTC".into()
    }

    async fn copy_in(&self, copy: CopyIn, data: Vec<u8>) -> Result<StatementResult, FrontendError> {
        let _ = (copy, data);
        Err(FrontendError::new(
            ErrorKind::FeatureNotSupported,
            "COPY FROM STDIN is not supported",
        ))
    }
}

/// Creates a session per connection.
pub trait SessionFactory: Send + Sync + 'static {
    fn new_session(&self, user: &str, database: &str) -> std::sync::Arc<dyn Session>;

    /// The SCRAM-SHA-256 verifier of `user`'s password, if it has one
    /// (see `pgwire::auth` for who may connect without).
    fn password_verifier(&self, user: &str) -> Option<String> {
        let _ = user;
        None
    }
}
