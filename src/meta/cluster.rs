//! Compute nodes and their parallel units.

use std::sync::Arc;

use crate::stream::compute_node::{ComputeNode, WorkerId};

pub type UnitId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerState {
    Running,
    Draining,
}

impl WorkerState {
    pub fn name(self) -> &'static str {
        match self {
            WorkerState::Running => "running",
            WorkerState::Draining => "draining",
        }
    }
}

pub struct Worker {
    pub id: WorkerId,
    pub host: String,
    pub state: WorkerState,
    pub units: Vec<UnitId>,
    pub node: Arc<ComputeNode>,
}
