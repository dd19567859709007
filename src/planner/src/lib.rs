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
#[error("{message}")]
pub struct PlanError {
    pub kind: ErrorKind,
    pub message: String,
}

impl PlanError {
    pub fn internal(what: impl Into<String>) -> Self {
        PlanError {
            kind: ErrorKind::InternalError,
            message: what.into(),
        }
    }

    pub fn unsupported(what: impl Into<String>) -> Self {
        PlanError {
            kind: ErrorKind::FeatureNotSupported,
            message: format!("{} is not supported", what.into()),
        }
    }
}
