//! Meta: the catalog, the cluster, the scheduler and the barrier manager.
//!
//! Meta owns the truth about which relations exist, how each is cut into
//! fragments, where every actor runs and which vnodes it owns. DDL goes
//! through here one statement at a time: plan → place actors → build them
//! idle on their compute nodes → one barrier carrying the mutation that
//! wires them in → catalog update once that barrier is committed.
//!
//! It drives the stream runtime through its compute-node interface
//! (`ebbflow_stream::compute_node::ComputeClient`, in process or over
//! `rpc`) with plans as data (`plan`), and commits the store's versions
//! with the catalog in its meta store. It must not know SQL, the planner,
//! sessions or the wire protocol: they call it, never the other way
//! (`ci/layers`).

pub mod barrier;
pub mod catalog;
pub mod cluster;
mod control;
mod ddl;
mod dml;
pub mod fragment;
pub mod graph;
pub mod key_format;
#[cfg(test)]
mod lsm_tests;
pub mod pg_catalog;
pub mod read;
mod recovery;
pub mod reschedule;
pub mod scale;
pub mod service;
mod sources;
pub mod store;
pub mod system;
pub mod users;
pub mod versions;
mod views;
pub mod workers;

use ebbflow_common::ErrorKind;
pub use service::{Meta, MetaConfig};

/// An error from meta.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetaError {
    /// A barrier did not commit (its kind says why).
    #[error(transparent)]
    Barrier(#[from] barrier::BarrierError),
    /// The state store failed under a catalog or version operation.
    #[error(transparent)]
    Storage(#[from] ebbflow_storage::StorageError),
    /// Meta refused the request: an undefined or duplicate object, a scale
    /// that does not fit, a node in the wrong state, ...
    #[error("{message}")]
    Refused {
        kind: ErrorKind,
        message: String,
        hint: Option<String>,
    },
}

impl MetaError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        MetaError::Refused {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InternalError, message)
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            MetaError::Barrier(e) => e.kind(),
            MetaError::Storage(_) => ErrorKind::InternalError,
            MetaError::Refused { kind, .. } => *kind,
        }
    }

    pub fn hint(&self) -> Option<&str> {
        match self {
            MetaError::Refused { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// Sets the hint, keeping the kind and message.
    pub fn set_hint(&mut self, new: String) {
        if let MetaError::Refused { hint, .. } = self {
            *hint = Some(new);
        } else {
            let mut refused = MetaError::new(self.kind(), self.to_string());
            refused.set_hint(new);
            *self = refused;
        }
    }
}

pub type MetaResult<T> = Result<T, MetaError>;
