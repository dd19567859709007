//! (stub until the batch engine lands)
use crate::common::Row;
use crate::meta::catalog::RelationDesc;
use crate::planner::logical::LogicalPlan;

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct BatchError {
    pub code: &'static str,
    pub message: String,
}

pub trait ScanSource: Send + Sync {
    fn scan(&self, relation: &RelationDesc) -> Result<Vec<Row>, BatchError>;
}

pub fn execute(_plan: &LogicalPlan, _source: &dyn ScanSource) -> Result<Vec<Row>, BatchError> {
    Err(BatchError {
        code: "0A000",
        message: "stub".into(),
    })
}
