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

use ebbflow_common::text::ParseError;
use ebbflow_expr::ExprError;

/// A parse or bind error with its kind.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SqlError {
    /// An expression that cannot be built (no such function, a type that
    /// does not fit) or a constant that fails to evaluate.
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// A literal that is not a value of its type.
    #[error(transparent)]
    Value(#[from] ParseError),
    /// A syntax error, an undefined table or column, an ambiguous column,
    /// a duplicate, a feature not supported, ...
    #[error("{message}")]
    Bind {
        kind: ErrorKind,
        message: String,
        detail: Option<String>,
        hint: Option<String>,
    },
}

impl SqlError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        SqlError::Bind {
            kind,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            SqlError::Expr(e) => e.kind(),
            SqlError::Value(e) => e.kind,
            SqlError::Bind { kind, .. } => *kind,
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            SqlError::Bind { detail, .. } => detail.as_deref(),
            _ => None,
        }
    }

    pub fn hint(&self) -> Option<&str> {
        match self {
            SqlError::Bind { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// Sets (or clears) the hint, keeping the kind and message.
    pub fn set_hint(&mut self, new: Option<String>) {
        if let SqlError::Bind { hint, .. } = self {
            *hint = new;
        } else if new.is_some() {
            let mut bound = SqlError::new(self.kind(), self.to_string());
            bound.set_hint(new);
            *self = bound;
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

pub type SqlResult<T> = Result<T, SqlError>;
