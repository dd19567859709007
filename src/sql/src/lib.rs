//! SQL front: parsing (sqlparser plus ebbflow's own statements) and binding
//! (names and types resolved against the catalog, producing a
//! [`BoundStatement`]).
//!
//! It owns the statements ebbflow accepts and what their names and types
//! resolve to in meta's catalog, producing the planner's logical plans. It
//! must not run anything (the batch engine, the runtime), nor know sessions
//! or the wire protocol (`ci/layers`).

pub mod binder;
pub mod bound;
pub mod parser;

pub use binder::{bind, describe, infer_param_types, CopyFormat, CopyOptions};
pub use bound::{BoundStatement, ParallelismSpec, ParamContext};
use ebbflow_common::ErrorKind;
pub use parser::{parse, Statement};

/// A parse or bind error with its kind.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    /// A syntax error, an undefined table or column, an ambiguous column,
    /// a type error, a duplicate, a feature not supported, ...
    pub kind: ErrorKind,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl SqlError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        SqlError {
            kind,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::SyntaxError, message)
    }

    pub fn unsupported(what: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::FeatureNotSupported,
            format!("{} is not supported", what.into()),
        )
    }
}

impl From<ebbflow_expr::ExprError> for SqlError {
    fn from(e: ebbflow_expr::ExprError) -> Self {
        SqlError::new(e.kind, e.message)
    }
}

pub type SqlResult<T> = Result<T, SqlError>;
