//! The meta service: state, DDL, DML routing and flush.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, oneshot, watch};

use super::barrier::{BarrierCommand, BarrierManager, BarrierSpec, ResetInfo};
use super::catalog::{ColumnDesc, RelationDesc, RelationKind, TableId};
use super::cluster::{UnitId, Worker, WorkerState};
use super::fragment::{actor_desc, dispatcher_desc, even_bitmaps, ActorInfo, Edge, Fragment};
use super::graph::{PlanGraph, Upstream, UpstreamInfo};
use super::{MetaError, MetaResult};
use crate::common::encoding::vnode_of;
use crate::common::{Bitmap, DataType, Op, Row, ScalarValue, StreamChunk};
use crate::storage::{MemoryStateStore, StateStore};
use crate::stream::build::{NodeDesc, StateTableDesc};
use crate::stream::compute_node::{ComputeNode, WorkerId};
use crate::stream::exchange::ExchangeRegistry;
use crate::stream::message::{ActorId, FragmentId, Message, Mutation};

/// First id of user relations and internal state tables; ids below are
/// system catalogs.
pub const FIRST_USER_ID: TableId = 1000;

#[derive(Clone, Debug)]
pub struct MetaConfig {
    pub compute_nodes: u32,
    pub parallel_units: u32,
    pub barrier_interval: Duration,
}

/// How many actors a job's hash fragments run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Parallelism {
    /// Every parallel unit of the cluster.
    Adaptive,
    Fixed(u32),
}

impl Parallelism {
    pub fn display(self) -> String {
        match self {
            Parallelism::Adaptive => "adaptive".into(),
            Parallelism::Fixed(n) => n.to_string(),
        }
    }
}

/// A table or MV and its streaming job.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RelationEntry {
    pub desc: Arc<RelationDesc>,
    pub dist_key: Vec<usize>,
    pub singleton: bool,
    pub fragments: Vec<FragmentId>,
    /// The fragment holding the relation's state (Materialize).
    pub materialize_fragment: FragmentId,
    /// Relations this one reads.
    pub upstreams: Vec<TableId>,
    pub internal_tables: Vec<TableId>,
    pub parallelism: Parallelism,
}

#[derive(Default)]
pub struct MetaState {
    pub workers: BTreeMap<WorkerId, Worker>,
    pub relations: BTreeMap<TableId, RelationEntry>,
    pub fragments: BTreeMap<FragmentId, Fragment>,
    pub edges: Vec<Edge>,
    next_table_id: TableId,
    next_fragment_id: FragmentId,
    next_actor_id: ActorId,
    /// `rw_scale_history`.
    pub scale_history: Vec<ScaleRecord>,
}

/// One scale or reschedule operation, as `rw_scale_history` shows it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ScaleRecord {
    pub id: u32,
    pub started_at: chrono::NaiveDateTime,
    pub statement: String,
    pub actors_added: u32,
    pub actors_removed: u32,
    pub vnodes_moved: u32,
    pub pause_ms: f64,
    pub total_ms: f64,
    pub status: String,
}

impl MetaState {
    /// Units of running workers, least loaded first (interleaved over
    /// workers on ties).
    pub fn placement_order(&self) -> Vec<(WorkerId, UnitId)> {
        self.units_for_placement()
    }

    pub fn next_actor(&mut self) -> ActorId {
        self.next_actor_id += 1;
        self.next_actor_id
    }

    pub fn worker_of_unit(&self, unit: UnitId) -> Option<WorkerId> {
        self.workers
            .values()
            .find(|w| w.units.contains(&unit))
            .map(|w| w.id)
    }

    pub fn relation_by_name(&self, name: &str) -> Option<&RelationEntry> {
        self.relations.values().find(|r| r.desc.name == name)
    }

    pub fn alloc_table_id(&mut self) -> TableId {
        self.next_table_id += 1;
        self.next_table_id
    }

    /// Running units, interleaved over workers, least loaded first.
    fn units_for_placement(&self) -> Vec<(WorkerId, UnitId)> {
        let mut load: HashMap<UnitId, usize> = HashMap::new();
        for f in self.fragments.values() {
            for a in &f.actors {
                *load.entry(a.unit).or_default() += 1;
            }
        }
        let mut per_worker: Vec<Vec<(WorkerId, UnitId)>> = self
            .workers
            .values()
            .filter(|w| w.state == WorkerState::Running)
            .map(|w| w.units.iter().map(|u| (w.id, *u)).collect())
            .collect();
        let mut out = Vec::new();
        let mut i = 0;
        while per_worker.iter().any(|w| i < w.len()) {
            for w in &mut per_worker {
                if let Some(u) = w.get(i) {
                    out.push(*u);
                }
            }
            i += 1;
        }
        out.sort_by_key(|(_, u)| load.get(u).copied().unwrap_or(0));
        out
    }

    pub fn total_units(&self) -> usize {
        self.workers
            .values()
            .filter(|w| w.state == WorkerState::Running)
            .map(|w| w.units.len())
            .sum()
    }

    pub(crate) fn node(&self, worker: WorkerId) -> Option<Arc<ComputeNode>> {
        self.workers.get(&worker).map(|w| w.node.clone())
    }
}

impl UpstreamInfo for MetaState {
    fn dist_key(&self, table_id: TableId) -> Option<Vec<usize>> {
        let r = self.relations.get(&table_id)?;
        if r.singleton {
            None
        } else {
            Some(r.dist_key.clone())
        }
    }

    fn state_table(&self, table_id: TableId) -> Option<StateTableDesc> {
        let r = self.relations.get(&table_id)?;
        self.fragments
            .get(&r.materialize_fragment)?
            .nodes
            .iter()
            .find_map(|n| match n {
                NodeDesc::Materialize { table, .. } => Some(table.clone()),
                _ => None,
            })
    }
}

/// Where the catalog lives in the state store: table id 0 is never a
/// relation's.
pub const META_KEY: &[u8] = b"\0\0\0\0meta";

/// The durable part of meta's state, committed with the epoch of the
/// barrier that applied each change.
#[derive(serde::Serialize, serde::Deserialize)]
struct PersistedMeta {
    relations: BTreeMap<TableId, RelationEntry>,
    fragments: BTreeMap<FragmentId, Fragment>,
    edges: Vec<Edge>,
    next_table_id: TableId,
    next_fragment_id: FragmentId,
    next_actor_id: ActorId,
    #[serde(default)]
    scale_history: Vec<ScaleRecord>,
}

impl MetaState {
    /// The catalog, serialized.
    pub fn snapshot(&self) -> bytes::Bytes {
        let p = PersistedMeta {
            relations: self.relations.clone(),
            fragments: self.fragments.clone(),
            edges: self.edges.clone(),
            next_table_id: self.next_table_id,
            next_fragment_id: self.next_fragment_id,
            next_actor_id: self.next_actor_id,
            scale_history: self.scale_history.clone(),
        };
        bytes::Bytes::from(serde_json::to_vec(&p).unwrap_or_default())
    }

    fn restore(&mut self, p: PersistedMeta) {
        self.relations = p.relations;
        self.fragments = p.fragments;
        self.edges = p.edges;
        self.next_table_id = p.next_table_id;
        self.next_fragment_id = p.next_fragment_id;
        self.next_actor_id = p.next_actor_id;
        self.scale_history = p.scale_history;
        // Actors placed on workers this process does not have move to the
        // units that exist, round robin.
        let units: Vec<(WorkerId, UnitId)> = self
            .workers
            .values()
            .flat_map(|w| w.units.iter().map(move |u| (w.id, *u)))
            .collect();
        if units.is_empty() {
            return;
        }
        let mut next = 0;
        for f in self.fragments.values_mut() {
            for a in &mut f.actors {
                let ok = self
                    .workers
                    .get(&a.worker)
                    .is_some_and(|w| w.units.contains(&a.unit));
                if !ok {
                    let (w, u) = units[next % units.len()];
                    next += 1;
                    a.worker = w;
                    a.unit = u;
                }
            }
        }
    }
}

/// Where DML for a table goes: the table fragment's vnode mapping and the
/// local channel of each of its actors.
pub struct TableRoute {
    pub pk: Vec<usize>,
    pub mapping: Vec<ActorId>,
    pub senders: HashMap<ActorId, mpsc::Sender<Message>>,
    /// Generates hidden row ids (tables without primary key).
    pub row_id_col: Option<usize>,
}

pub struct Meta {
    pub config: MetaConfig,
    pub state: Mutex<MetaState>,
    pub store: Arc<dyn StateStore>,
    registry: Arc<ExchangeRegistry>,
    nodes: Arc<RwLock<HashMap<WorkerId, Arc<ComputeNode>>>>,
    barrier_tx: mpsc::UnboundedSender<BarrierCommand>,
    committed: watch::Receiver<u64>,
    /// One DDL (or scale) at a time.
    pub(crate) ddl_lock: tokio::sync::Mutex<()>,
    /// Held shared by DML while it routes and sends; exclusively while the
    /// layout of a table changes.
    pub(crate) routes: tokio::sync::RwLock<HashMap<TableId, Arc<TableRoute>>>,
    row_id: AtomicI64,
    recoveries: AtomicI64,
    /// Test knob shared by every actor: see `inject_actor_failure`.
    fault: Arc<std::sync::atomic::AtomicU32>,
    /// See `BarrierManager::dml_gate`.
    dml_gate: Arc<tokio::sync::RwLock<()>>,
}

/// Runs a recovery whenever the barrier manager reports a failure.
async fn recovery_loop(meta: std::sync::Weak<Meta>, mut rx: mpsc::UnboundedReceiver<String>) {
    while let Some(reason) = rx.recv().await {
        while rx.try_recv().is_ok() {}
        let Some(meta) = meta.upgrade() else { return };
        tracing::warn!(%reason, "recovering every streaming job from the last committed epoch");
        let mut delay = Duration::from_millis(10);
        loop {
            match meta.recover().await {
                Ok(()) => {
                    tracing::info!(epoch = meta.committed_epoch(), "recovery done");
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, "recovery failed; retrying");
                    while rx.try_recv().is_ok() {}
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

impl Meta {
    /// Start meta, the compute nodes and the barrier manager.
    /// Start with an in-memory store (tests).
    pub fn start(config: MetaConfig) -> Arc<Meta> {
        let store: Arc<dyn StateStore> = Arc::new(MemoryStateStore::new());
        Self::start_with_store(config, store)
    }

    /// Start meta over `store`. If the store holds a committed catalog, it
    /// is loaded; call [`Meta::resume`] to rebuild its actors.
    pub fn start_with_store(config: MetaConfig, store: Arc<dyn StateStore>) -> Arc<Meta> {
        let registry = Arc::new(ExchangeRegistry::default());
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (committed_tx, committed_rx) = watch::channel(store.committed_epoch());
        let nodes = Arc::new(RwLock::new(HashMap::new()));
        let fault = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let mut state = MetaState {
            next_table_id: FIRST_USER_ID,
            ..Default::default()
        };
        let mut unit = 0;
        for id in 1..=config.compute_nodes {
            let node = Arc::new(ComputeNode::new(
                id,
                store.clone(),
                registry.clone(),
                events_tx.clone(),
                committed_rx.clone(),
                fault.clone(),
            ));
            nodes.write().insert(id, node.clone());
            let units = (unit..unit + config.parallel_units).collect();
            unit += config.parallel_units;
            state.workers.insert(
                id,
                Worker {
                    id,
                    host: format!("127.0.0.1:{}", 5687 + id),
                    state: WorkerState::Running,
                    units,
                    node,
                },
            );
        }
        if let Ok(Some(bytes)) = store.get(META_KEY, false) {
            match serde_json::from_slice::<PersistedMeta>(&bytes) {
                Ok(p) => state.restore(p),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the persisted catalog; starting empty")
                }
            }
        }
        let (barrier_tx, barrier_rx) = mpsc::unbounded_channel();
        let (recovery_tx, recovery_rx) = mpsc::unbounded_channel();
        let dml_gate = Arc::new(tokio::sync::RwLock::new(()));
        let manager = BarrierManager::new(
            store.clone(),
            nodes.clone(),
            events_rx,
            barrier_rx,
            committed_tx,
            config.barrier_interval,
            recovery_tx,
            dml_gate.clone(),
        );
        tokio::spawn(manager.run());
        let now_micros = chrono::Utc::now().timestamp_micros();
        let meta = Arc::new(Meta {
            config,
            state: Mutex::new(state),
            store,
            registry,
            nodes,
            barrier_tx,
            committed: committed_rx,
            ddl_lock: tokio::sync::Mutex::new(()),
            routes: tokio::sync::RwLock::new(HashMap::new()),
            row_id: AtomicI64::new(now_micros << 10),
            recoveries: AtomicI64::new(0),
            fault,
            dml_gate,
        });
        tokio::spawn(recovery_loop(Arc::downgrade(&meta), recovery_rx));
        meta
    }

    /// After a start over a store with a catalog: rebuild every job's actors
    /// from the last committed epoch. Returns once they run.
    pub async fn resume(&self) -> MetaResult<()> {
        if self.state.lock().relations.is_empty() {
            return Ok(());
        }
        self.recover().await
    }

    /// Make the next chunk processed by an actor of `fragment` fail that
    /// actor (a test fault; the cluster then recovers).
    pub fn inject_actor_failure(&self, fragment: FragmentId) {
        self.fault.store(fragment, Ordering::SeqCst);
    }

    /// How many recoveries ran since start.
    pub fn recovery_count(&self) -> i64 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Rebuild every actor from the catalog and resume from the last
    /// committed epoch: state written after it is discarded, sources rewind
    /// to the offsets committed with it, caches start cold.
    async fn recover(&self) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        let mut routes = self.routes.write().await;
        routes.clear();
        let nodes: Vec<Arc<ComputeNode>> = self.nodes.read().values().cloned().collect();
        for n in nodes {
            n.abort_all_and_wait().await;
        }
        self.registry.clear();
        self.store.abort_uncommitted();
        let (per_worker, actors, sources) = {
            let st = self.state.lock();
            let mut per_worker: HashMap<WorkerId, Vec<_>> = HashMap::new();
            let mut actors = Vec::new();
            let mut sources = Vec::new();
            for f in st.fragments.values() {
                for a in &f.actors {
                    actors.push(a.actor_id);
                    if !matches!(f.source, crate::stream::build::SourceDesc::None) {
                        sources.push((a.worker, a.actor_id));
                    }
                    per_worker.entry(a.worker).or_default().push(actor_desc(
                        f,
                        a,
                        &st.fragments,
                        &st.edges,
                        false,
                    ));
                }
            }
            (per_worker, actors, sources)
        };
        {
            let nodes = self.nodes.read();
            for (w, descs) in per_worker {
                if let Some(n) = nodes.get(&w) {
                    n.build_actors(&descs);
                }
            }
        }
        let (done, rx) = oneshot::channel();
        self.barrier_tx
            .send(BarrierCommand {
                spec: BarrierSpec::default(),
                reset: Some(ResetInfo { actors, sources }),
                done,
            })
            .map_err(|_| MetaError::internal("barrier manager is gone"))?;
        drop(routes);
        rx.await
            .map_err(|_| MetaError::internal("barrier manager is gone"))?
            .map_err(MetaError::internal)?;
        self.recoveries.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn committed_epoch(&self) -> u64 {
        *self.committed.borrow()
    }

    /// A barrier with `mutation`; the catalog is committed with it when
    /// there is a mutation.
    async fn barrier(
        &self,
        mutation: Option<Mutation>,
        add_actors: Vec<ActorId>,
        add_sources: Vec<(WorkerId, ActorId)>,
        remove_actors: Vec<ActorId>,
    ) -> MetaResult<u64> {
        let meta_snapshot = mutation.as_ref().map(|_| self.state.lock().snapshot());
        self.barrier_with(BarrierSpec {
            mutation,
            add_actors,
            add_sources,
            remove_actors,
            meta_snapshot,
            injected: None,
        })
        .await
    }

    /// Persist the catalog with the next barrier and wait until it is
    /// committed.
    pub(crate) async fn persist_catalog(&self) -> MetaResult<u64> {
        let meta_snapshot = Some(self.state.lock().snapshot());
        self.barrier_with(BarrierSpec {
            meta_snapshot,
            ..Default::default()
        })
        .await
    }

    /// Persist the catalog with the next barrier, without waiting.
    pub(crate) fn persist_catalog_soon(&self) {
        let (done, _) = oneshot::channel();
        let _ = self.barrier_tx.send(BarrierCommand {
            spec: BarrierSpec {
                meta_snapshot: Some(self.state.lock().snapshot()),
                ..Default::default()
            },
            reset: None,
            done,
        });
    }

    /// Run one barrier; returns the epoch it closed, once committed.
    pub(crate) async fn barrier_with(&self, spec: BarrierSpec) -> MetaResult<u64> {
        let (done, rx) = oneshot::channel();
        self.barrier_tx
            .send(BarrierCommand {
                spec,
                reset: None,
                done,
            })
            .map_err(|_| MetaError::internal("barrier manager is gone"))?;
        rx.await
            .map_err(|_| MetaError::internal("barrier manager is gone"))?
            .map_err(MetaError::internal)
    }

    /// Force a checkpoint; returns once everything sent before is committed.
    pub async fn flush(&self) -> MetaResult<u64> {
        self.barrier(None, vec![], vec![], vec![]).await
    }

    fn check_name_free(state: &MetaState, name: &str) -> MetaResult<()> {
        if let Some(r) = state.relation_by_name(name) {
            return Err(MetaError::new(
                "42P07",
                format!("relation \"{}\" already exists", r.desc.name),
            ));
        }
        Ok(())
    }

    /// Allocate ids for a job's state tables (used by the planner).
    pub fn alloc_table_id(&self) -> TableId {
        self.state.lock().alloc_table_id()
    }

    /// Record a job's parallelism setting (when no actor has to change).
    pub fn set_parallelism(&self, table_id: TableId, p: Parallelism) {
        if let Some(r) = self.state.lock().relations.get_mut(&table_id) {
            r.parallelism = p;
        }
    }

    /// Whether a relation of that name exists.
    pub fn name_exists(&self, name: &str) -> bool {
        self.state.lock().relation_by_name(name).is_some()
    }

    pub fn with_state<R>(&self, f: impl FnOnce(&MetaState) -> R) -> R {
        f(&self.state.lock())
    }

    /// Create a relation's streaming job from its plan and wait until it is
    /// running and (for MVs) backfilled.
    pub async fn create_job(
        &self,
        mut desc: RelationDesc,
        graph: PlanGraph,
        parallelism: Parallelism,
    ) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        let table_id = desc.id;
        // 1. place
        let (new_frags, new_edges, mutation_dispatchers, add_actors, add_sources, descs) = {
            let mut st = self.state.lock();
            Self::check_name_free(&st, &desc.name)?;
            let total = st.total_units().max(1);
            let n = match parallelism {
                Parallelism::Adaptive => total,
                Parallelism::Fixed(n) => (n as usize).min(total).max(1),
            };
            let mut frag_ids = Vec::new();
            let mut new_frags = Vec::new();
            for pf in &graph.fragments {
                st.next_fragment_id += 1;
                let fid = st.next_fragment_id;
                frag_ids.push(fid);
                let count = if pf.singleton { 1 } else { n };
                let units = st.units_for_placement();
                let bitmaps = if pf.singleton {
                    vec![Bitmap::full()]
                } else {
                    even_bitmaps(count)
                };
                let mut actors = Vec::new();
                for (i, vnodes) in bitmaps.into_iter().enumerate() {
                    st.next_actor_id += 1;
                    let (worker, unit) = units[i % units.len().max(1)];
                    actors.push(ActorInfo {
                        actor_id: st.next_actor_id,
                        worker,
                        unit,
                        vnodes,
                    });
                }
                let frag = Fragment {
                    id: fid,
                    table_id,
                    nodes: pf.nodes.clone(),
                    singleton: pf.singleton,
                    source: pf.source.clone(),
                    actors,
                };
                // Register now so later fragments of this job count its load.
                st.fragments.insert(fid, frag.clone());
                new_frags.push(frag);
            }
            let mut new_edges = Vec::new();
            let mut upstreams = Vec::new();
            for (i, pf) in graph.fragments.iter().enumerate() {
                for (idx, (up, spec)) in pf.inputs.iter().enumerate() {
                    let up_frag = match up {
                        Upstream::Local(j) => frag_ids[*j],
                        Upstream::Existing(t) => {
                            upstreams.push(*t);
                            match st.relations.get(t) {
                                Some(r) => r.materialize_fragment,
                                None => {
                                    for f in &frag_ids {
                                        st.fragments.remove(f);
                                    }
                                    return Err(MetaError::new(
                                        "42P01",
                                        format!("relation with id {t} does not exist"),
                                    ));
                                }
                            }
                        }
                    };
                    new_edges.push(Edge {
                        up: up_frag,
                        down: frag_ids[i],
                        input_index: idx,
                        spec: spec.clone(),
                    });
                }
            }
            st.edges.extend(new_edges.iter().cloned());
            // dispatchers of existing upstream actors towards the new job
            let mut mutation_dispatchers: HashMap<ActorId, Vec<_>> = HashMap::new();
            for e in &new_edges {
                if frag_ids.contains(&e.up) {
                    continue;
                }
                if let (Some(up), Some(down)) = (st.fragments.get(&e.up), st.fragments.get(&e.down))
                {
                    let d = dispatcher_desc(e, down);
                    for a in &up.actors {
                        mutation_dispatchers
                            .entry(a.actor_id)
                            .or_default()
                            .push(d.clone());
                    }
                }
            }
            let mut add_actors = Vec::new();
            let mut add_sources = Vec::new();
            let mut descs: Vec<(WorkerId, crate::stream::build::ActorDesc)> = Vec::new();
            for f in &new_frags {
                for a in &f.actors {
                    add_actors.push(a.actor_id);
                    if !matches!(f.source, crate::stream::build::SourceDesc::None) {
                        add_sources.push((a.worker, a.actor_id));
                    }
                    descs.push((a.worker, actor_desc(f, a, &st.fragments, &st.edges, true)));
                }
            }
            upstreams.sort_unstable();
            upstreams.dedup();
            desc.columns = graph.columns.clone();
            let materialize_fragment = *frag_ids.last().unwrap_or(&0);
            st.relations.insert(
                table_id,
                RelationEntry {
                    desc: Arc::new(desc.clone()),
                    dist_key: graph.dist_key.clone(),
                    singleton: graph.singleton,
                    fragments: frag_ids.clone(),
                    materialize_fragment,
                    upstreams,
                    internal_tables: graph.internal_tables.clone(),
                    parallelism,
                },
            );
            (
                new_frags,
                new_edges,
                mutation_dispatchers,
                add_actors,
                add_sources,
                descs,
            )
        };
        let _ = &new_edges;
        // 2. build idle actors
        {
            let mut per_worker: HashMap<WorkerId, Vec<_>> = HashMap::new();
            for (w, d) in descs {
                per_worker.entry(w).or_default().push(d);
            }
            let st = self.state.lock();
            for (w, ds) in per_worker {
                if let Some(node) = st.node(w) {
                    node.build_actors(&ds);
                }
            }
        }
        // 3. wire them in with one barrier, then make the backfill visible
        let added: HashSet<ActorId> = add_actors.iter().copied().collect();
        let mutation = Mutation::Add {
            dispatchers: mutation_dispatchers,
            added_actors: added,
        };
        if let Err(e) = self
            .barrier(Some(mutation), add_actors, add_sources, vec![])
            .await
        {
            // Forget the job: the recovery that follows the failed barrier
            // rebuilds the cluster without it.
            let mut st = self.state.lock();
            st.relations.remove(&table_id);
            for f in &new_frags {
                st.fragments.remove(&f.id);
            }
            let ids: Vec<FragmentId> = new_frags.iter().map(|f| f.id).collect();
            st.edges
                .retain(|e| !ids.contains(&e.up) && !ids.contains(&e.down));
            return Err(e);
        }
        // Backfill, one slice per barrier, until every vnode is done. Not
        // under the DDL lock: the job can be rescaled meanwhile, and a
        // recovery (which takes it) may have to run before a flush can
        // finish; the backfill continues from its committed progress.
        drop(_ddl);
        loop {
            self.flush().await?;
            match self.backfill_done(table_id)? {
                Some(true) => return Ok(()),
                Some(false) => {}
                None => {
                    return Err(MetaError::new(
                        "57014",
                        "the materialized view was dropped while it was being created",
                    ))
                }
            }
        }
    }

    /// Whether every stream scan of a job has backfilled every vnode, as
    /// committed (`None` if the job is gone).
    pub fn backfill_done(&self, table_id: TableId) -> MetaResult<Option<bool>> {
        let progress_tables: Vec<TableId> = {
            let st = self.state.lock();
            let Some(r) = st.relations.get(&table_id) else {
                return Ok(None);
            };
            r.fragments
                .iter()
                .filter_map(|f| st.fragments.get(f))
                .flat_map(|f| f.nodes.iter())
                .filter_map(|n| match n {
                    NodeDesc::StreamScan {
                        backfill: Some(b), ..
                    } => Some(b.progress.table_id),
                    _ => None,
                })
                .collect()
        };
        for t in progress_tables {
            let prefix = crate::storage::table_prefix(t);
            let rows = self
                .store
                .scan(crate::storage::prefix_range(&prefix), false)?;
            let mut done = 0;
            for (_, v) in rows {
                let row = crate::common::encoding::decode_row_tagged(&v)
                    .map_err(|e| MetaError::internal(e.to_string()))?;
                if matches!(row.first(), Some(Some(ScalarValue::Boolean(true)))) {
                    done += 1;
                }
            }
            if done < crate::common::VNODE_COUNT {
                return Ok(Some(false));
            }
        }
        Ok(Some(true))
    }

    /// Drop a relation (and, with `cascade`, everything reading it).
    pub async fn drop_relation(&self, table_id: TableId, cascade: bool) -> MetaResult<()> {
        let _ddl = self.ddl_lock.lock().await;
        // collect the relations to drop, dependents first
        let order = {
            let st = self.state.lock();
            let mut order = Vec::new();
            let mut stack = vec![table_id];
            while let Some(t) = stack.pop() {
                if order.contains(&t) {
                    continue;
                }
                let deps: Vec<&RelationEntry> = st
                    .relations
                    .values()
                    .filter(|r| r.upstreams.contains(&t))
                    .collect();
                if !deps.is_empty() && !cascade {
                    let me = st
                        .relations
                        .get(&t)
                        .map(|r| r.desc.clone())
                        .ok_or_else(|| MetaError::internal("relation vanished"))?;
                    let mut e = MetaError::new(
                        "2BP01",
                        format!(
                            "cannot drop {} {} because other objects depend on it",
                            me.kind.name(),
                            me.name
                        ),
                    );
                    e.hint = Some(format!(
                        "materialized view {} depends on it; use DROP ... CASCADE to drop the dependent objects too",
                        deps[0].desc.name
                    ));
                    return Err(e);
                }
                order.push(t);
                stack.extend(deps.iter().map(|d| d.desc.id));
            }
            order.reverse();
            order
        };
        for t in order {
            self.drop_one(t).await?;
        }
        Ok(())
    }

    async fn drop_one(&self, table_id: TableId) -> MetaResult<()> {
        let (actors, by_worker) = {
            let st = self.state.lock();
            let Some(r) = st.relations.get(&table_id) else {
                return Ok(());
            };
            let mut actors = Vec::new();
            let mut by_worker: HashMap<WorkerId, Vec<ActorId>> = HashMap::new();
            for f in &r.fragments {
                if let Some(f) = st.fragments.get(f) {
                    for a in &f.actors {
                        actors.push(a.actor_id);
                        by_worker.entry(a.worker).or_default().push(a.actor_id);
                    }
                }
            }
            (actors, by_worker)
        };
        self.routes.write().await.remove(&table_id);
        let mutation = Mutation::Stop {
            actors: actors.iter().copied().collect(),
        };
        self.barrier(Some(mutation), vec![], vec![], actors).await?;
        let tables = {
            let mut st = self.state.lock();
            let Some(r) = st.relations.remove(&table_id) else {
                return Ok(());
            };
            for f in &r.fragments {
                st.fragments.remove(f);
            }
            st.edges
                .retain(|e| !r.fragments.contains(&e.up) && !r.fragments.contains(&e.down));
            for (w, ids) in &by_worker {
                if let Some(n) = st.node(*w) {
                    n.forget_actors(ids);
                }
            }
            let mut tables = r.internal_tables.clone();
            tables.push(table_id);
            tables
        };
        self.persist_catalog().await?;
        for t in tables {
            self.store.delete_table(t)?;
        }
        Ok(())
    }

    /// The DML route of a table (cached until its layout changes).
    pub async fn route(&self, table_id: TableId) -> MetaResult<Arc<TableRoute>> {
        if let Some(r) = self.routes.read().await.get(&table_id) {
            return Ok(r.clone());
        }
        // Computed under the exclusive lock: a route computed before a
        // reschedule and cached after it would send rows to actors that no
        // longer own their vnodes.
        let mut routes = self.routes.write().await;
        if let Some(r) = routes.get(&table_id) {
            return Ok(r.clone());
        }
        let route = {
            let st = self.state.lock();
            let r = st.relations.get(&table_id).ok_or_else(|| {
                MetaError::new("42P01", format!("table with id {table_id} does not exist"))
            })?;
            let frag = st
                .fragments
                .get(&r.materialize_fragment)
                .ok_or_else(|| MetaError::internal("table fragment missing"))?;
            let mut senders = HashMap::new();
            for a in &frag.actors {
                let tx = st
                    .node(a.worker)
                    .and_then(|n| n.local_sender(a.actor_id))
                    .ok_or_else(|| MetaError::internal("table actor is not running"))?;
                senders.insert(a.actor_id, tx);
            }
            let row_id_col = if r.desc.user_pk {
                None
            } else {
                r.desc.pk.first().copied()
            };
            Arc::new(TableRoute {
                pk: r.desc.pk.clone(),
                mapping: frag.mapping(),
                senders,
                row_id_col,
            })
        };
        routes.insert(table_id, route.clone());
        Ok(route)
    }

    /// A fresh hidden row id.
    pub fn next_row_id(&self) -> i64 {
        self.row_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Send DML changes to a table's actors. Inserts into a table without
    /// primary key get fresh row ids. Returns once the actors have them
    /// queued (not yet committed: see `flush`).
    pub async fn write_dml(&self, table_id: TableId, chunk: StreamChunk) -> MetaResult<()> {
        self.write_dml_statement(table_id, std::iter::once(chunk))
            .await
    }

    /// Send all changes of one statement. They land in one epoch: the
    /// barrier manager injects under the exclusive DML gate, and the
    /// statement holds it shared while it sends. Lock order: routes, then
    /// gate (a reschedule holds the routes exclusively while its barrier is
    /// injected under the gate).
    pub async fn write_dml_statement(
        &self,
        table_id: TableId,
        parts: impl IntoIterator<Item = StreamChunk>,
    ) -> MetaResult<()> {
        // Hold the route shared while sending: a scale swaps it
        // exclusively, and a route computed before that swap must never be
        // used after it (rows would reach actors that no longer own them).
        let (routes, route) = loop {
            let routes = self.routes.read().await;
            if let Some(r) = routes.get(&table_id).cloned() {
                break (routes, r);
            }
            drop(routes);
            self.route(table_id).await?;
        };
        let gate = self.dml_gate.read().await;
        for chunk in parts {
            self.send_dml(&route, chunk).await?;
        }
        drop(gate);
        drop(routes);
        Ok(())
    }

    async fn send_dml(&self, route: &TableRoute, chunk: StreamChunk) -> MetaResult<()> {
        let mut per_actor: HashMap<ActorId, StreamChunk> = HashMap::new();
        let mut rows = chunk.into_iter_rows().peekable();
        while let Some((op, mut row)) = rows.next() {
            if let (Some(c), Op::Insert) = (route.row_id_col, op) {
                if row[c].is_none() {
                    row[c] = Some(ScalarValue::Int64(self.next_row_id()));
                }
            }
            let target = route.mapping[vnode_of(&row, &route.pk) as usize];
            if op == Op::UpdateDelete {
                if let Some((Op::UpdateInsert, next)) = rows.peek() {
                    let t2 = route.mapping[vnode_of(next, &route.pk) as usize];
                    if t2 != target {
                        per_actor.entry(target).or_default().push(Op::Delete, row);
                        if let Some((_, next)) = rows.next() {
                            per_actor.entry(t2).or_default().push(Op::Insert, next);
                        }
                        continue;
                    }
                }
            }
            per_actor.entry(target).or_default().push(op, row);
        }
        for (actor, c) in per_actor {
            let tx = route
                .senders
                .get(&actor)
                .ok_or_else(|| MetaError::internal("no route to table actor"))?;
            tx.send(Message::Chunk(c))
                .await
                .map_err(|_| MetaError::internal("table actor is gone"))?;
        }
        Ok(())
    }

    /// Every committed row of a table or MV (hidden columns included).
    pub fn scan(&self, desc: &RelationDesc) -> MetaResult<Vec<Row>> {
        Ok(crate::storage::state_table::scan_table_committed(
            &*self.store,
            desc.id,
            &desc.types(),
            None,
        )?)
    }

    pub fn relation_by_name(&self, name: &str) -> Option<Arc<RelationDesc>> {
        self.state
            .lock()
            .relation_by_name(name)
            .map(|r| r.desc.clone())
    }

    pub fn all_relations(&self) -> Vec<Arc<RelationDesc>> {
        self.state
            .lock()
            .relations
            .values()
            .map(|r| r.desc.clone())
            .collect()
    }

    /// Shut down every actor.
    pub fn shutdown(&self) {
        for n in self.nodes.read().values() {
            n.abort_all();
        }
        self.registry.clear();
    }
}

/// Columns of a new table: the declared ones, plus a hidden row id when no
/// primary key is declared. Returns the columns and the pk.
pub fn table_columns(
    columns: Vec<ColumnDesc>,
    pk: Vec<usize>,
) -> (Vec<ColumnDesc>, Vec<usize>, bool) {
    if pk.is_empty() {
        let mut cols = columns;
        cols.push(ColumnDesc::hidden("_row_id", DataType::Int64));
        let n = cols.len() - 1;
        (cols, vec![n], false)
    } else {
        (columns, pk, true)
    }
}

/// Make a catalog entry's descriptor.
#[allow(clippy::too_many_arguments)]
pub fn relation_desc(
    id: TableId,
    name: String,
    kind: RelationKind,
    columns: Vec<ColumnDesc>,
    pk: Vec<usize>,
    user_pk: bool,
    definition: Option<String>,
    with_options: BTreeMap<String, String>,
) -> RelationDesc {
    RelationDesc {
        id,
        name,
        kind,
        columns,
        pk,
        user_pk,
        definition,
        with_options,
    }
}
