//! What the layers above read of meta's state: copies and rows made under
//! its lock, so no caller holds the lock or sees `MetaState` itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::catalog::{RelationDesc, SessionInfo, TableId};
use super::cluster::{UnitId, WorkerState};
use super::fragment::Fragment;
use super::graph::UpstreamSnapshot;
use super::service::{Meta, SystemParams};
use super::system::SourceFragment;
use ebbflow_common::{FragmentId, Row};
use ebbflow_stream::compute_node::WorkerId;

/// A compute node as `SHOW CLUSTER` lists it.
#[derive(Clone, Debug)]
pub struct WorkerView {
    pub id: WorkerId,
    pub host: String,
    pub state: WorkerState,
    pub units: Vec<UnitId>,
}

impl Meta {
    /// Every relation the catalogs list (`pg_class` and friends), with its
    /// schema's name.
    pub fn catalog_relations(&self) -> Vec<(&'static str, Arc<RelationDesc>)> {
        super::pg_catalog::all_relations(&self.state.lock())
    }

    /// The rows of the `pg_catalog` or `information_schema` relation
    /// `name` (id `id`), as `session` sees them.
    pub fn pg_catalog_rows(&self, name: &str, id: TableId, session: &SessionInfo) -> Vec<Row> {
        super::pg_catalog::pg_rows(&self.state.lock(), name, id, session)
    }

    /// The rows of the `rw_catalog` relation `name`.
    pub fn system_rows(&self, name: &str) -> Vec<Row> {
        super::system::system_rows(&self.state.lock(), name)
    }

    /// Every source fragment with its splits (for `rw_source_progress`).
    pub fn source_fragment_list(&self) -> Vec<SourceFragment> {
        super::system::source_fragments(&self.state.lock())
    }

    /// The existing relations' layout, copied so planning holds no lock.
    pub fn upstream_snapshot(&self) -> UpstreamSnapshot {
        let st = self.state.lock();
        UpstreamSnapshot::of(&*st, st.relations.keys().copied())
    }

    /// The cluster-wide settings of `ALTER SYSTEM`.
    pub fn params(&self) -> SystemParams {
        self.state.lock().params.clone()
    }

    /// Parallel units of the running compute nodes.
    pub fn total_units(&self) -> usize {
        self.state.lock().total_units()
    }

    /// The compute nodes and every fragment, both by id, read together
    /// (one layout, never half of a scale).
    pub fn cluster_layout(&self) -> (Vec<WorkerView>, Vec<Fragment>) {
        let st = self.state.lock();
        let workers = st
            .workers
            .values()
            .map(|w| WorkerView {
                id: w.id,
                host: w.host.clone(),
                state: w.state,
                units: w.units.clone(),
            })
            .collect();
        (workers, st.fragments.values().cloned().collect())
    }

    /// The fragments, by id: of the relation `table` only, or all.
    pub fn fragments(&self, table: Option<TableId>) -> Vec<Fragment> {
        self.state
            .lock()
            .fragments
            .values()
            .filter(|f| table.is_none_or(|t| f.table_id == t))
            .cloned()
            .collect()
    }

    /// The fragment that materializes a table or an MV.
    pub fn materialize_fragment(&self, table: TableId) -> Option<FragmentId> {
        self.state
            .lock()
            .relations
            .get(&table)
            .map(|r| r.materialize_fragment)
    }

    /// Actors placed on each compute node (every node listed).
    pub fn actors_per_worker(&self) -> BTreeMap<WorkerId, u64> {
        let st = self.state.lock();
        let mut actors: BTreeMap<WorkerId, u64> = st.workers.keys().map(|w| (*w, 0)).collect();
        for f in st.fragments.values() {
            for a in &f.actors {
                *actors.entry(a.worker).or_default() += 1;
            }
        }
        actors
    }

    /// Scale operations so far by outcome (`rw_scale_history`'s status),
    /// and their pauses added up, in milliseconds.
    pub fn scale_totals(&self) -> (BTreeMap<String, u64>, f64) {
        let st = self.state.lock();
        let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
        let mut pause_ms = 0.0;
        for s in &st.scale_history {
            *by_status.entry(s.status.clone()).or_default() += 1;
            pause_ms += s.pause_ms;
        }
        (by_status, pause_ms)
    }
}
