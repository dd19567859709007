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
pub use parser::{parse, Statement};

/// A parse or bind error with its SQLSTATE.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    /// `42601` syntax, `42P01` unknown relation, `42703` unknown column,
    /// `42702` ambiguous column, `42804`/`42883` type errors, `42P07`
    /// already exists, `0A000` not supported, `42803` grouping error, ...
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError {
            code,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new("42601", message)
    }

    pub fn unsupported(what: impl Into<String>) -> Self {
        Self::new("0A000", format!("{} is not supported", what.into()))
    }
}

impl From<ebbflow_expr::ExprError> for SqlError {
    fn from(e: ebbflow_expr::ExprError) -> Self {
        SqlError::new(e.code, e.message)
    }
}

pub type SqlResult<T> = Result<T, SqlError>;
