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

/// An error from meta, with its kind.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct MetaError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

impl MetaError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        MetaError {
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InternalError, message)
    }
}

impl From<barrier::BarrierError> for MetaError {
    fn from(e: barrier::BarrierError) -> Self {
        MetaError::new(e.kind(), e.to_string())
    }
}

impl From<ebbflow_storage::StorageError> for MetaError {
    fn from(e: ebbflow_storage::StorageError) -> Self {
        MetaError::internal(e.to_string())
    }
}

pub type MetaResult<T> = Result<T, MetaError>;
