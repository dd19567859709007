//! A job's fragment graph as planned: what meta schedules.

use crate::catalog::{ColumnDesc, TableId};
use ebbflow_plan::{NodeDesc, SourceDesc, StateTableDesc};

/// How rows cross from an upstream fragment into a downstream one.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum EdgeSpec {
    /// By vnode of these upstream output columns.
    Hash(Vec<usize>),
    /// All to the single downstream actor.
    Simple,
    Broadcast,
    NoShuffle,
}

impl EdgeSpec {
    pub fn name(&self) -> &'static str {
        match self {
            EdgeSpec::Hash(_) => "hash",
            EdgeSpec::Simple => "simple",
            EdgeSpec::Broadcast => "broadcast",
            EdgeSpec::NoShuffle => "no_shuffle",
        }
    }
}

/// Where a fragment's input comes from.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Upstream {
    /// Another fragment of the same graph (index).
    Local(usize),
    /// The materialize fragment of an existing table or MV.
    Existing(TableId),
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PlanFragment {
    pub nodes: Vec<NodeDesc>,
    /// Inputs in executor input order.
    pub inputs: Vec<(Upstream, EdgeSpec)>,
    pub singleton: bool,
    pub source: SourceDesc,
}

/// The fragments of one job, upstream first; the last one materializes.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PlanGraph {
    pub fragments: Vec<PlanFragment>,
    /// Columns of the materialized relation (visible then hidden).
    pub columns: Vec<ColumnDesc>,
    pub pk: Vec<usize>,
    /// Distribution key of the materialized relation (empty if singleton).
    pub dist_key: Vec<usize>,
    pub singleton: bool,
    /// State tables created for the job (the relation's own id excluded).
    pub internal_tables: Vec<TableId>,
    /// Plain views the query named: inlined into the plan, so no fragment
    /// reads them, but the relation depends on them (DROP VIEW refuses).
    pub views: Vec<TableId>,
    /// Sources the job reads: each is a source fragment of the job's own,
    /// and the relation depends on them (DROP SOURCE refuses).
    pub sources: Vec<TableId>,
}

/// What the planner needs to know of existing relations.
pub trait UpstreamInfo {
    /// Distribution key of a relation's materialized state, or `None` if it
    /// lives in a singleton fragment.
    fn dist_key(&self, table_id: TableId) -> Option<Vec<usize>>;
    /// The layout of a relation's materialized state.
    fn state_table(&self, table_id: TableId) -> Option<StateTableDesc>;
}

/// The distribution and state layout of existing relations, copied so
/// planning holds no lock.
#[derive(Default)]
pub struct UpstreamSnapshot {
    pub relations: std::collections::HashMap<TableId, (Option<Vec<usize>>, Option<StateTableDesc>)>,
}

impl UpstreamSnapshot {
    pub fn of(info: &dyn UpstreamInfo, ids: impl IntoIterator<Item = TableId>) -> Self {
        UpstreamSnapshot {
            relations: ids
                .into_iter()
                .map(|id| (id, (info.dist_key(id), info.state_table(id))))
                .collect(),
        }
    }
}

impl UpstreamInfo for UpstreamSnapshot {
    fn dist_key(&self, table_id: TableId) -> Option<Vec<usize>> {
        self.relations.get(&table_id).and_then(|r| r.0.clone())
    }

    fn state_table(&self, table_id: TableId) -> Option<StateTableDesc> {
        self.relations.get(&table_id).and_then(|r| r.1.clone())
    }
}
