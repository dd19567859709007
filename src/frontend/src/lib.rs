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
#[error("{message}")]
pub struct FrontendError {
    pub kind: ErrorKind,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl FrontendError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        FrontendError {
            kind,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InternalError, message)
    }
}

impl From<ebbflow_sql::SqlError> for FrontendError {
    fn from(e: ebbflow_sql::SqlError) -> Self {
        FrontendError {
            kind: e.kind,
            message: e.message,
            detail: e.detail,
            hint: e.hint,
        }
    }
}

impl From<ebbflow_expr::ExprError> for FrontendError {
    fn from(e: ebbflow_expr::ExprError) -> Self {
        FrontendError::new(e.kind, e.message)
    }
}

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
