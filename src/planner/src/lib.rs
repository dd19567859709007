//! Planning: the logical plan, and its translation into a stream fragment
//! graph.
//!
//! It owns what a query means as relational operators
//! ([`logical::LogicalPlan`]) and how an incremental job is cut into
//! fragments of `plan`'s node descriptions, reading relations from meta's
//! catalog. It produces plans as data and must not know how they run (the
//! stream runtime, the batch engine), SQL text, or sessions (`ci/layers`).

use ebbflow_common::ErrorKind;
pub mod logical;
pub mod stream;
mod watermark;

/// A planning error with its kind (feature not supported for what the
/// stream planner cannot maintain incrementally).
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    /// What the stream planner cannot maintain incrementally (the message
    /// says what and, where it helps, why).
    #[error("{0}")]
    Unsupported(String),
    /// A bound plan that breaks the planner's contract (a bug upstream).
    #[error("{0}")]
    Internal(String),
}

impl PlanError {
    pub fn internal(what: impl Into<String>) -> Self {
        PlanError::Internal(what.into())
    }

    /// `<what> is not supported`.
    pub fn unsupported(what: impl Into<String>) -> Self {
        PlanError::Unsupported(format!("{} is not supported", what.into()))
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            PlanError::Unsupported(_) => ErrorKind::FeatureNotSupported,
            PlanError::Internal(_) => ErrorKind::InternalError,
        }
    }
}

pub type PlanResult<T> = Result<T, PlanError>;
